package weirbench;

/** A Nexmark person (Flink POJO: public fields, no-arg constructor). Times in ms of event time. */
public class Person {
    public long id;
    public String name;
    public String emailAddress;
    public String creditCard;
    public String city;
    public String state;
    public long dateTime;
    public String extra;

    public Person() {}

    public Person(long id, String name, String emailAddress, String creditCard, String city,
                  String state, long dateTime, String extra) {
        this.id = id;
        this.name = name;
        this.emailAddress = emailAddress;
        this.creditCard = creditCard;
        this.city = city;
        this.state = state;
        this.dateTime = dateTime;
        this.extra = extra;
    }

    @Override
    public String toString() {
        return "Person{id=" + id + ", name=" + name + ", email=" + emailAddress + ", cc=" + creditCard
                + ", city=" + city + ", state=" + state + ", dateTime=" + dateTime + ", extra=" + extra.length() + "b}";
    }
}
